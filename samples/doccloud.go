package samples

// DocCloud is the cloud of the example requests in docs/drivers.md: the
// placeholders say what to put there (make demo PACKAGE=<sample>
// DEMOFLAGS=-print-request prints a request with them filled in for the
// embedded cloud).
var DocCloud = Cloud{NetworkID: "<id of network net0>", NodePassword: "<node password>", VimName: "my-cluster",
	Ansible: &AnsibleServer{Address: "10.77.0.5", User: "ansible", Password: "<the Ansible server's password>",
		KubesprayRoot: "/opt/kubespray", Inventories: "/home/ansible/inventories"},
	ClusterAuthURL: "http://keystone.internal.example:5000/v3"}
