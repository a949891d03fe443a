"""Developer tools of the cidrx repository (not shipped in the wheel)."""
