"""Reports of solves and simulations for people: text summaries (``text``), the files a solve writes
under --out (``files``) and the pictures (``plots``, matplotlib imported on first use)."""
