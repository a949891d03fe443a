# GKE discontiguous multi-Pod CIDR: when a cluster's pod range is full (IP_SPACE_EXHAUSTED), add another
# secondary range to its subnet and let new node pools take their per-node pod blocks from it.
#
# The same change as `cidrx expand --gke --project P --location L --cluster C --plan` (node-pool strategy:
# a pool with network_config.pod_range; cluster-range strategy: the range in the cluster's additional pod
# ranges). See README.md.

provider "google" {
  project = var.project
  region  = var.region
}

resource "google_compute_subnetwork" "cluster" {
  name          = var.subnet_name
  region        = var.region
  network       = var.network
  ip_cidr_range = var.subnet_cidr

  # Terraform owns this whole list: a range added outside Terraform (by cidrx or gcloud) is removed by the
  # next apply unless it is listed here, and GKE refuses to remove a range a node pool uses.
  secondary_ip_range {
    range_name    = var.services_range.name
    ip_cidr_range = var.services_range.cidr
  }

  secondary_ip_range {
    range_name    = var.default_pod_range.name
    ip_cidr_range = var.default_pod_range.cidr
  }

  dynamic "secondary_ip_range" {
    for_each = var.extra_pod_ranges
    content {
      range_name    = secondary_ip_range.key
      ip_cidr_range = secondary_ip_range.value
    }
  }
}

resource "google_container_cluster" "this" {
  name     = var.cluster_name
  location = var.region

  network    = var.network
  subnetwork = google_compute_subnetwork.cluster.name

  # Node pools are managed below, one resource each.
  remove_default_node_pool = true
  initial_node_count       = 1

  ip_allocation_policy {
    cluster_secondary_range_name  = var.default_pod_range.name
    services_secondary_range_name = var.services_range.name

    dynamic "additional_pod_ranges_config" {
      for_each = length(var.cluster_pod_ranges) > 0 ? [1] : []
      content {
        pod_range_names = var.cluster_pod_ranges
      }
    }
  }
}

resource "google_container_node_pool" "pools" {
  for_each = var.node_pools

  name     = each.key
  cluster  = google_container_cluster.this.id
  location = var.region

  initial_node_count = 1
  # Sets the per-node pod block: 110 pods -> /24, 64 -> /25, 32 -> /26 (next power of two of 2 x max pods).
  max_pods_per_node = each.value.max_pods_per_node

  node_config {
    machine_type    = each.value.machine_type
    service_account = var.node_service_account
    oauth_scopes    = ["https://www.googleapis.com/auth/cloud-platform"]
  }

  # Without pod_range the pool uses the cluster's default pod range.
  dynamic "network_config" {
    for_each = each.value.pod_range == null ? [] : [each.value.pod_range]
    content {
      pod_range = network_config.value
    }
  }

  autoscaling {
    min_node_count = each.value.min_nodes
    max_node_count = each.value.max_nodes
  }

  lifecycle {
    ignore_changes = [initial_node_count]
  }

  # The pool's pod range must exist on the subnet before the pool is created.
  depends_on = [google_compute_subnetwork.cluster]
}
