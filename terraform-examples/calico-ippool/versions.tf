terraform {
  # import blocks (for adopting a pool `cidrx expand --apply` created) need Terraform 1.5 or later.
  required_version = ">= 1.5.0"

  required_providers {
    kubernetes = {
      source = "hashicorp/kubernetes"
      # kubernetes_manifest is generally available in 2.x.
      version = ">= 2.23, < 3.0"
    }
  }
}
