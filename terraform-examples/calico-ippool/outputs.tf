output "pool_name" {
  description = "Name of the IPPool."
  value       = kubernetes_manifest.ippool.manifest.metadata.name
}

output "cidr" {
  description = "CIDR of the IPPool."
  value       = var.cidr
}

output "blocks" {
  description = "Number of blocks the pool holds: 2^(block_size - CIDR prefix). Each node claims at least one."
  value       = pow(2, var.block_size - tonumber(split("/", var.cidr)[1]))
}
