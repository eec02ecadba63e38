"""Maps the repository's top-level folders onto one `rocketspec` package tree.

`spec/` becomes `rocketspec.spec`, `reference/` becomes `rocketspec.reference`, and so on,
so the folders users asked for stay at the top while imports stay namespaced.
"""
from setuptools import find_packages, setup

FOLDERS = {
    "rocketspec": "rocketspec",
    "rocketspec.spec": "spec",
    "rocketspec.reference": "reference",
    "rocketspec.model_checks": "model_checks",
    "rocketspec.conformance": "conformance",
    "rocketspec.traces": "traces",
}

packages, package_dir = [], {}
for name, folder in FOLDERS.items():
    packages.append(name)
    package_dir[name] = folder
    for sub in find_packages(where=folder):
        packages.append(f"{name}.{sub}")
        package_dir[f"{name}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={"rocketspec.traces": ["*.json", "samples/*"], "rocketspec.spec": ["*.md"]},
)
