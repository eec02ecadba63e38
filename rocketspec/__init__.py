"""rocketspec: an executable model of Apache RocketMQ consumer semantics.

Subpackages: `rocketspec.spec` (the model), `rocketspec.reference` (reference broker and
client), `rocketspec.model_checks`, `rocketspec.conformance`, `rocketspec.traces`.
"""
__version__ = "0.1.0"
