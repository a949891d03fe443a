variable "project" {
  description = "GCP project id."
  type        = string
}

variable "region" {
  description = "Region of the subnet and the (regional) cluster, e.g. australia-southeast1."
  type        = string
}

variable "network" {
  description = "Name of the existing VPC network."
  type        = string
}

variable "subnet_name" {
  description = "Name of the cluster's subnet (managed here: Terraform owns its whole list of secondary ranges)."
  type        = string
}

variable "subnet_cidr" {
  description = "Primary range of the subnet (node addresses)."
  type        = string
}

variable "services_range" {
  description = "Secondary range for Services: name and CIDR."
  type = object({
    name = string
    cidr = string
  })
}

variable "default_pod_range" {
  description = "The cluster's original (default) pod secondary range: name and CIDR. Its size caps the nodes of the pools that use it at 2^(per-node prefix - range prefix)."
  type = object({
    name = string
    cidr = string
  })
}

variable "extra_pod_ranges" {
  description = "Additional pod secondary ranges on the subnet: name => CIDR. Must not overlap any range in the network, peered routes or private services access."
  type        = map(string)
  default     = {}
}

variable "cluster_name" {
  description = "Name of the GKE cluster."
  type        = string
}

variable "cluster_pod_ranges" {
  description = "Names (from extra_pod_ranges) added to the cluster's additional pod ranges (the cluster-range strategy): node pools created afterwards, including by node auto-provisioning, may use them."
  type        = list(string)
  default     = []
}

variable "node_pools" {
  description = "Node pools: name => settings. pod_range null uses the cluster's default pod range; a name from extra_pod_ranges makes it a discontiguous multi-Pod CIDR pool (the node-pool strategy)."
  type = map(object({
    machine_type      = string
    pod_range         = optional(string)
    max_pods_per_node = optional(number, 110)
    min_nodes         = optional(number, 1)
    max_nodes         = optional(number, 3)
  }))
}

variable "node_service_account" {
  description = "Service account email for the nodes (a least-privilege account, not the Compute Engine default)."
  type        = string
}
