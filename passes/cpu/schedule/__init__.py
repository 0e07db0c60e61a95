"""mlirc-cpu-vectorize's schedule: how each linalg op is read (loops.py), which ops stay
scalar or on one thread (op_checks.py), the plan chosen for an op (plans.py) and the
transform script that applies the plans (transform_script.py)."""
