"""The sweep spec: sweeps, recipes, cells, routing and the signed envelope a cell travels in."""
