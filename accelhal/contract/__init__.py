"""What a backend is: the contract, its spec and verdicts, the checks, the device-module implementation."""
