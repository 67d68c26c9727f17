"""The rewardkit scoring service: a thin FastAPI adapter over rewardkit's registry and engine."""
