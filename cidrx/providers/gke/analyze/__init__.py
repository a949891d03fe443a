"""GKE diagnosis (`analyze.analyze`): findings and capacity from a snapshot."""
