package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
)

var _ driverapi.HostKeyPublisher = (*Driver)(nil)

// PublishedHostKeys implements driverapi.HostKeyPublisher: the host key
// fingerprints cloud-init has printed to the server's console log so far.
func (d *Driver) PublishedHostKeys(ctx context.Context, op *driverapi.Op, serverID string) ([]string, error) {
	c, err := d.connect(ctx, op)
	if err != nil {
		return nil, err
	}
	out, err := servers.ShowConsoleOutput(ctx, c.nova, serverID, servers.ShowConsoleOutputOpts{}).Extract()
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("server %s no longer exists", serverID)
		}
		return nil, nil // BUILD (409) and the like: not published yet
	}
	fps, _ := consoleHostKeys(out)
	return fps, nil
}
