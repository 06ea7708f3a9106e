"""The platform and its cost model, in one place: the network (``topology``), the NPU and its
communication engine (``endpoint``), how a collective splits into phases over the dimensions
(``collectives``), what each phase and each compute task costs (``costs``), and the endpoint's shared
pools as the replay and the bounds see them (``pools``). The MILP, the bounds and the simulator all price
work here, so they agree by construction."""
