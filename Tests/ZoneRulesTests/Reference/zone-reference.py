#!/usr/bin/env python3
"""Reference offsets for every zone of the system's tzdata, from `zdump -v` and Python's zoneinfo.

Reads TZDIR (default /usr/share/zoneinfo). Prints one line per instant zdump reports around a
change (the second before and the first second after), for 1970-2037 and for the years 2100 and
2400 (the TZif footer's rules):

    <zone> <utc seconds> <zdump offset> <zoneinfo offset>

ZoneTZifConformanceTests compares ZoneRules with both columns.
"""
import datetime
import os
import subprocess
import sys
import zoneinfo

tzdir = os.environ.get("TZDIR") or "/usr/share/zoneinfo"
zoneinfo.reset_tzpath([tzdir])
zones = sorted(zoneinfo.available_timezones())
env = dict(os.environ, TZDIR=tzdir, LC_ALL="C")
out = sys.stdout
for years in ("1970,2038", "2100,2101", "2400,2401"):
    dump = subprocess.run(["zdump", "-v", "-c", years, *zones], env=env, check=True,
                          capture_output=True, text=True).stdout
    for line in dump.splitlines():
        # Europe/Berlin  Sun Mar 29 01:00:00 2026 UT = Sun Mar 29 03:00:00 2026 CEST isdst=1 gmtoff=7200
        if " UT = " not in line:
            continue
        name, rest = line.split(None, 1)
        universal = datetime.datetime.strptime(rest.split(" UT = ")[0].strip(), "%a %b %d %H:%M:%S %Y")
        utc = int(universal.replace(tzinfo=datetime.timezone.utc).timestamp())
        gmtoff = int(line.rsplit("gmtoff=", 1)[1])
        reference = datetime.datetime.fromtimestamp(utc, zoneinfo.ZoneInfo(name)).utcoffset()
        out.write(f"{name} {utc} {gmtoff} {int(reference.total_seconds())}\n")
