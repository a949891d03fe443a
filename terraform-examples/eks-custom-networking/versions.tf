terraform {
  # import blocks (for adopting what `cidrx expand --apply` created) need Terraform 1.5 or later.
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 7.0"
    }
    kubernetes = {
      source = "hashicorp/kubernetes"
      # kubernetes_env (used when the VPC CNI is self-managed) and kubernetes_manifest are both in 2.x.
      version = ">= 2.23, < 3.0"
    }
  }
}
