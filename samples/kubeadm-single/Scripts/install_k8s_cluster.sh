#!/bin/bash
# Placeholder: the kubeadm management driver issue provides the install
# script it copies to each node. Kept so the package layout is complete.
set -euo pipefail
echo "install_k8s_cluster.sh: placeholder, not implemented yet" >&2
exit 1
