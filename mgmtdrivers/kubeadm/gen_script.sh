#!/bin/sh
# Regenerates the copies of scripts/install_k8s_cluster.sh: the one the
# kubeadm driver embeds and the ones the kubeadm-single, kubeadm-ha and kubeadm-ha-lb sample
# packages ship.
# Run through `go generate ./mgmtdrivers/kubeadm` (from this directory).
set -eu
src=../../scripts/install_k8s_cluster.sh
marker='# Code generated from scripts/install_k8s_cluster.sh by go generate ./mgmtdrivers/kubeadm; DO NOT EDIT.'
for dst in install_k8s_cluster.sh ../../samples/kubeadm-single/Scripts/install_k8s_cluster.sh ../../samples/kubeadm-ha/Scripts/install_k8s_cluster.sh ../../samples/kubeadm-ha-lb/Scripts/install_k8s_cluster.sh; do
	{
		sed -n 1p "$src"
		printf '%s\n' "$marker"
		sed 1d "$src"
	} >"$dst.tmp"
	chmod 755 "$dst.tmp"
	mv "$dst.tmp" "$dst"
done
