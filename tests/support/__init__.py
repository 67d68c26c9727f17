"""What the tests share and are not tests themselves: a service subprocess (helpers), a fake judge endpoint
(fake_judge), a tiny ms-swift model and dataset (tiny_swift), and veRL's own managers run in a subprocess
(verl_run, run by path, never imported here)."""
