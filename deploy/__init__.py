"""Installs and controls benchfleet workers on lab hosts over SSH (fabric, paramiko), and holds
the service templates: a systemd unit, a launchd plist, and a pidfile supervisor for hosts with
neither."""
