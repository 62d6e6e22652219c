"""Network boot of the os stage's installer: dnsmasq configured from the inventory (provision netboot)."""
