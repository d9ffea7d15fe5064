#!/bin/sh
out=/nsbox-vm-out
cat /proc/self/cgroup > $out/root-cgroup.txt
uname -r > $out/uname.txt
id nsboxvm >/dev/null 2>&1 || useradd -m -s /bin/sh nsboxvm
su -l nsboxvm -c 'cat /proc/self/cgroup; echo XDG=$XDG_RUNTIME_DIR DBUS=$DBUS_SESSION_BUS_ADDRESS; ls -la $XDG_RUNTIME_DIR' > $out/user-cgroup.txt 2>&1
loginctl list-sessions >> $out/user-cgroup.txt 2>&1
