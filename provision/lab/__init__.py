"""The built-in lab: a Redfish BMC simulator (bmcsim) and node twins, driven by `provision lab`."""
