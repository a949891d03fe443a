"""Reading an EKS estate into the snapshot's EKS section: the VPC and cluster (`vpc`), routes the VPC's tables
do not show (`routes`), IPAM pools (`ipam_pools`) and the node provisioners (`provisioners`). The only I/O of
the package besides the step executors; every read goes through `cidrx.providers.eks.api`."""
