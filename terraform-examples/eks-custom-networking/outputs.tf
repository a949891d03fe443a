output "pod_subnet_ids" {
  description = "Pod subnet id per availability zone (what each ENIConfig points at)."
  value       = { for az, s in aws_subnet.pods : az => s.id }
}

output "pod_cidr_association_id" {
  description = "Association id of the secondary VPC CIDR."
  value       = aws_vpc_ipv4_cidr_block_association.pods.id
}

output "node_group_arn" {
  description = "ARN of the new node group whose nodes use custom networking."
  value       = aws_eks_node_group.pods.arn
}
