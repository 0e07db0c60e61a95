// RUN: mlirc-opt --list-passes | FileCheck %s
// CHECK-DAG: mlirc-lower-to-linalg
// CHECK-DAG: mlirc-fuse-elementwise
// CHECK-DAG: mlirc-form-kernels
// CHECK-DAG: mlirc-cpu-vectorize
// CHECK-DAG: mlirc-stage-linalg
// CHECK-DAG: mlirc-stage-kernels
// CHECK-DAG: mlirc-stage-cpu
