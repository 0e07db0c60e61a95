"""mlirc-cpu-parallelize's helpers (they register no pass): which loops a kernel may
split into chunks, and one parallel region for a kernel of several parts."""
