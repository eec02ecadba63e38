"""The profiles now live in `rocketspec.rocketmq.profiles`; this name stays an alias of
that module (the same module object, so `Profile` and `PROFILES` are shared)."""
import sys

from rocketspec.rocketmq import profiles as _profiles

sys.modules[__name__] = _profiles
