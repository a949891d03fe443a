# EKS custom networking: give pods addresses from a secondary VPC CIDR instead of the node subnets.
#
# The same change as `cidrx expand --eks --region R --cluster C --plan` (strategy custom-networking):
# associate a CIDR with the VPC, one pod subnet per AZ routed like the node subnets, an ENIConfig per AZ
# named after the zone, the VPC CNI switched to custom networking, and a new node group (only nodes that
# join after the switch use the ENIConfigs). See README.md.

provider "aws" {
  region = var.region
}

data "aws_eks_cluster" "this" {
  name = var.cluster_name
}

data "aws_eks_cluster_auth" "this" {
  name = var.cluster_name
}

provider "kubernetes" {
  host                   = data.aws_eks_cluster.this.endpoint
  cluster_ca_certificate = base64decode(data.aws_eks_cluster.this.certificate_authority[0].data)
  token                  = data.aws_eks_cluster_auth.this.token
}

locals {
  vpc_id = data.aws_eks_cluster.this.vpc_config[0].vpc_id
  # Pods on custom networking use the security groups named in the ENIConfig; the cluster security group
  # is what the node group's own ENIs carry.
  cluster_security_group_id = data.aws_eks_cluster.this.vpc_config[0].cluster_security_group_id

  cni_env = {
    AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG = "true"
    # ENIConfigs are named after the zone, so nodes pick theirs by their zone label.
    ENI_CONFIG_LABEL_DEF = "topology.kubernetes.io/zone"
  }
}

resource "aws_vpc_ipv4_cidr_block_association" "pods" {
  vpc_id     = local.vpc_id
  cidr_block = var.pod_cidr
}

resource "aws_subnet" "pods" {
  for_each = var.pod_subnets

  # Referencing the association makes Terraform create the subnet only once the CIDR is associated.
  vpc_id            = aws_vpc_ipv4_cidr_block_association.pods.vpc_id
  availability_zone = each.key
  cidr_block        = each.value.cidr

  tags = merge(var.tags, {
    Name                                        = "${var.cluster_name}-pods-${each.key}"
    "kubernetes.io/cluster/${var.cluster_name}" = "shared"
  })
}

resource "aws_route_table_association" "pods" {
  for_each = var.pod_subnets

  subnet_id      = aws_subnet.pods[each.key].id
  route_table_id = each.value.route_table_id
}

# kubernetes_manifest needs the ENIConfig CRD at plan time; the VPC CNI installs it.
resource "kubernetes_manifest" "eniconfig" {
  for_each = var.pod_subnets

  manifest = {
    apiVersion = "crd.k8s.amazonaws.com/v1alpha1"
    kind       = "ENIConfig"
    metadata = {
      name = each.key
    }
    spec = {
      subnet         = aws_subnet.pods[each.key].id
      securityGroups = [local.cluster_security_group_id]
    }
  }
}

# Managed add-on: the env goes into configuration_values, which replaces the add-on's whole configuration,
# so anything it already carries must be passed in var.vpc_cni_extra_configuration.
resource "aws_eks_addon" "vpc_cni" {
  count = var.vpc_cni_managed_addon ? 1 : 0

  cluster_name = var.cluster_name
  addon_name   = "vpc-cni"
  configuration_values = jsonencode(merge(var.vpc_cni_extra_configuration, {
    env = merge(try(var.vpc_cni_extra_configuration.env, {}), local.cni_env)
  }))
  resolve_conflicts_on_update = "PRESERVE"

  depends_on = [kubernetes_manifest.eniconfig]
}

# Self-managed VPC CNI: set just these variables on the aws-node container. force takes them over from the
# field manager that set them before (kubectl, eksctl, a Helm chart).
resource "kubernetes_env" "aws_node" {
  count = var.vpc_cni_managed_addon ? 0 : 1

  api_version = "apps/v1"
  kind        = "DaemonSet"
  container   = "aws-node"
  force       = true

  metadata {
    name      = "aws-node"
    namespace = "kube-system"
  }

  dynamic "env" {
    for_each = local.cni_env
    content {
      name  = env.key
      value = env.value
    }
  }

  depends_on = [kubernetes_manifest.eniconfig]
}

resource "aws_eks_node_group" "pods" {
  cluster_name    = var.cluster_name
  node_group_name = var.node_group_name
  node_role_arn   = var.node_role_arn
  subnet_ids      = length(var.node_subnet_ids) > 0 ? var.node_subnet_ids : [for s in aws_subnet.pods : s.id]
  instance_types  = var.instance_types
  tags            = var.tags

  scaling_config {
    min_size     = var.scaling.min
    desired_size = var.scaling.desired
    max_size     = var.scaling.max
  }

  lifecycle {
    # The cluster autoscaler owns the desired size once the group exists.
    ignore_changes = [scaling_config[0].desired_size]
  }

  # Nodes must start after the CNI runs in custom networking mode, or they use the node subnets for pods.
  depends_on = [aws_eks_addon.vpc_cni, kubernetes_env.aws_node, aws_route_table_association.pods]
}
