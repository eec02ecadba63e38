"""Run every benchmark module in bench/ in turn."""
import importlib
import pkgutil
import sys

import bench

for info in pkgutil.iter_modules(bench.__path__):
    if info.name.startswith("_"):
        continue
    print(f"== bench.{info.name}", flush=True)
    mod = importlib.import_module(f"bench.{info.name}")
    if hasattr(mod, "main"):
        mod.main([]) if mod.main.__code__.co_argcount else mod.main()
sys.exit(0)
