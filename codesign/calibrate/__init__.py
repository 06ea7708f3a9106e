"""Predictions against real machines: measured runs read (``runs``), rebuilt as problems on a cluster profile
and predicted (``predict``), judged (``accuracy``), and profiles fitted to microbenchmarks and single-node
runs (``fit``); docs/accuracy.md."""
