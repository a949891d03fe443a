"""How cidrx talks to the APIs it reads and changes: the one retry policy and the activity reports every
`*/api.py` client uses, below the engine, the Kubernetes client and the providers, so each of them can use
them without importing the others."""
