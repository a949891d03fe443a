"""Live estates: the incidents and the organisations' set-ups, built in moto, the GCP fake and the fake
Kubernetes API server (one noun for every environment a test runs against)."""
