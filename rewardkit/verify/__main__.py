"""``python -m rewardkit.verify``: the math worker host process (see :mod:`rewardkit.verify.host`)."""

from rewardkit.verify.host import main

if __name__ == "__main__":  # also imported as __mp_main__ by the forkserver: then it must do nothing
    main()
