variable "kubeconfig_path" {
  description = "Path of the kubeconfig that reaches the cluster running Calico."
  type        = string
  default     = "~/.kube/config"
}

variable "kube_context" {
  description = "kubeconfig context of the cluster; null uses the kubeconfig's current context."
  type        = string
  default     = null
}

variable "api_version" {
  description = "IPPool API: crd.projectcalico.org/v1 (Calico's Kubernetes datastore CRD, what cidrx writes) or projectcalico.org/v3 when the Calico API server is installed (same spec, validated by Calico)."
  type        = string
  default     = "crd.projectcalico.org/v1"

  validation {
    condition     = contains(["crd.projectcalico.org/v1", "projectcalico.org/v3"], var.api_version)
    error_message = "api_version must be crd.projectcalico.org/v1 or projectcalico.org/v3."
  }
}

variable "pool_name" {
  description = "Name of the new IPPool (cidrx names it after its CIDR, e.g. cidrx-10-0-2-0-23)."
  type        = string
}

variable "cidr" {
  description = "IPv4 CIDR of the new pool. It must overlap no other pool, the node network or the Service range (cidrx expand --strategy calico-pool --plan finds a free one)."
  type        = string

  validation {
    condition     = try(cidrhost(var.cidr, 0) == split("/", var.cidr)[0], false)
    error_message = "cidr must be an IPv4 network address with its prefix, e.g. 10.0.2.0/23."
  }
}

variable "block_size" {
  description = "Prefix length of the blocks nodes claim from the pool (Calico's default 26: 64 addresses). Keep the existing pools' size; it cannot change once the pool exists."
  type        = number
  default     = 26

  validation {
    condition     = var.block_size >= 20 && var.block_size <= 32
    error_message = "Calico accepts IPv4 block sizes from 20 to 32."
  }
}

variable "ipip_mode" {
  description = "IP-in-IP encapsulation: Always, CrossSubnet or Never. Use what the existing pool uses, so pods on either pool reach each other the same way."
  type        = string
  default     = "Never"

  validation {
    condition     = contains(["Always", "CrossSubnet", "Never"], var.ipip_mode)
    error_message = "ipip_mode must be Always, CrossSubnet or Never."
  }
}

variable "vxlan_mode" {
  description = "VXLAN encapsulation: Always, CrossSubnet or Never. At most one of ipip_mode and vxlan_mode may be other than Never."
  type        = string
  default     = "Never"

  validation {
    condition     = contains(["Always", "CrossSubnet", "Never"], var.vxlan_mode)
    error_message = "vxlan_mode must be Always, CrossSubnet or Never."
  }
}

variable "nat_outgoing" {
  description = "Masquerade traffic from pods of this pool to destinations outside all Calico pools (as the default pool usually does)."
  type        = bool
  default     = true
}

variable "node_selector" {
  description = "Calico selector of the nodes that may claim blocks from this pool; all() for every node."
  type        = string
  default     = "all()"
}

variable "disabled" {
  description = "true keeps the pool but stops Calico from handing out new blocks from it."
  type        = bool
  default     = false
}

variable "labels" {
  description = "Labels for the IPPool object (cidrx adds cidrx.io/plan = <plan id> to the pools it creates)."
  type        = map(string)
  default     = {}
}
