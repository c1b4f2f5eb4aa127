"""Where a decode token's time goes: phase rules and the attribution of kernels (or ops) to them."""
