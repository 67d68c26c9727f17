"""What the tests share and are not tests themselves: a service subprocess (helpers), a fake judge endpoint
(fake_judge), and veRL's own managers run in a subprocess (verl_run, run by path, never imported here). The
trainers' tiny model is rewardkit/examples/_tiny.py's: the e2e tests run the examples."""
