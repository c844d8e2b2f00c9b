#!/bin/bash
# Placeholder: the kubespray management driver issue provides the script
# that installs HAProxy on the externalLB VM. Kept so the package layout is
# complete.
set -euo pipefail
echo "install_external_lb.sh: placeholder, not implemented yet" >&2
exit 1
