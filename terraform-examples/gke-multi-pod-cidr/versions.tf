terraform {
  # import blocks (for adopting what `cidrx expand --apply` created) need Terraform 1.5 or later.
  required_version = ">= 1.5.0"

  required_providers {
    google = {
      source = "hashicorp/google"
      # additional_pod_ranges_config on google_container_cluster needs 5.x.
      version = ">= 5.0, < 7.0"
    }
  }
}
