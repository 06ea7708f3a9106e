"""Co-design over a workload suite: one engine and network for several workloads (docs/suites.md).

``spec`` reads a suite's problem file into one ``Problem`` per workload on one platform, ``search`` finds the
suite's best design with its proof, ``report`` prints and serialises the answer."""
