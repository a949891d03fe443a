# Calico: a new IPPool in free address space, so nodes that found every block claimed get blocks again.
#
# The same change as `cidrx expand --k8s --plan --strategy calico-pool`: one IPPool, with the block size,
# encapsulation and outgoing NAT of the existing pool, for every node. Existing blocks stay where they are;
# nodes claim blocks of the new pool when they need one. See README.md.

provider "kubernetes" {
  config_path    = var.kubeconfig_path
  config_context = var.kube_context
}

resource "kubernetes_manifest" "ippool" {
  manifest = {
    apiVersion = var.api_version
    kind       = "IPPool"
    metadata = {
      name   = var.pool_name
      labels = var.labels
    }
    spec = {
      cidr      = var.cidr
      blockSize = var.block_size
      # Calico rejects a pool with both encapsulations on; Never for both means plain routing (BGP).
      ipipMode     = var.ipip_mode
      vxlanMode    = var.vxlan_mode
      natOutgoing  = var.nat_outgoing
      nodeSelector = var.node_selector
      disabled     = var.disabled
      # A pool for pods: Workload (Tunnel is upstream's other default use), handed out automatically.
      allowedUses    = ["Workload", "Tunnel"]
      assignmentMode = "Automatic"
    }
  }

  lifecycle {
    precondition {
      condition     = var.ipip_mode == "Never" || var.vxlan_mode == "Never"
      error_message = "Set at most one of ipip_mode and vxlan_mode to something other than Never."
    }
    precondition {
      condition     = var.block_size >= tonumber(split("/", var.cidr)[1])
      error_message = "block_size must not be shorter than the pool's own prefix (the pool must hold a whole block)."
    }
  }
}
