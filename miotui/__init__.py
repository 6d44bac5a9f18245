"""miotui: decode MIOpen logs into layers, reproduce them with MIOpenDriver, run and verify them."""

__version__ = "0.1.0"
