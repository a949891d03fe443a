output "pod_ranges" {
  description = "Every pod secondary range of the subnet: name => CIDR."
  value       = merge({ (var.default_pod_range.name) = var.default_pod_range.cidr }, var.extra_pod_ranges)
}

output "node_pool_pod_ranges" {
  description = "Pod range each node pool takes its per-node blocks from."
  value       = { for name, pool in google_container_node_pool.pools : name => pool.network_config[0].pod_range }
}
