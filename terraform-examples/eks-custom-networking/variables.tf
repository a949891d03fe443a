variable "region" {
  description = "AWS region of the cluster, e.g. ap-southeast-2."
  type        = string
}

variable "cluster_name" {
  description = "Name of the existing EKS cluster whose pods need more addresses."
  type        = string
}

variable "pod_cidr" {
  description = "Secondary IPv4 CIDR to associate with the cluster's VPC for pods. 100.64.0.0/10 is allowed next to any primary range; check it overlaps nothing routed (cidrx expand --plan finds a free one)."
  type        = string
  default     = "100.64.0.0/20"
}

variable "pod_subnets" {
  description = "One pod subnet per availability zone the nodes use: AZ => { cidr inside pod_cidr, route_table_id of the node subnet in that AZ }. Use the node subnets' route table, not the VPC's main table."
  type = map(object({
    cidr           = string
    route_table_id = string
  }))
}

variable "vpc_cni_managed_addon" {
  description = "true when vpc-cni is an EKS managed add-on (its env is set through configuration_values); false for a self-managed aws-node DaemonSet (set with kubernetes_env)."
  type        = bool
  default     = true
}

variable "vpc_cni_extra_configuration" {
  description = "Other configuration_values the vpc-cni add-on already has (decoded JSON); merged with the custom networking env so this module does not drop them."
  type        = any
  default     = {}
}

variable "node_group_name" {
  description = "Name of the new managed node group; only nodes that join after custom networking is on use the ENIConfigs."
  type        = string
  default     = "pods-cn"
}

variable "node_subnet_ids" {
  description = "Subnets for the new nodes' own addresses (one per AZ). Nodes still take their primary address from these: pick subnets with room, not the exhausted ones. Leave empty to put nodes in the new pod subnets."
  type        = list(string)
  default     = []
}

variable "node_role_arn" {
  description = "IAM role ARN for the new node group (usually the same role as the existing node group)."
  type        = string
}

variable "instance_types" {
  description = "Instance types of the new node group. Max pods per node becomes (ENIs - 1) x (IPs per ENI - 1) + 2 with custom networking."
  type        = list(string)
  default     = ["m5.large"]
}

variable "scaling" {
  description = "Node group size: min, desired and max nodes."
  type = object({
    min     = number
    desired = number
    max     = number
  })
  default = {
    min     = 1
    desired = 2
    max     = 6
  }
}

variable "tags" {
  description = "Extra tags for every AWS resource this module creates."
  type        = map(string)
  default     = {}
}
