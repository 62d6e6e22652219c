"""Day zero: find Redfish services (an address range or a vendor/DHCP file), say what each BMC is and which
profile it fits, and enroll new ones into the inventory (provision/cli/discover.py is the command line)."""
