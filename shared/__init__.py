"""Pure code shared by the control plane, the search workers and the CLI."""
