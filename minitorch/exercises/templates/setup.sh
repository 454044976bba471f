#!/bin/sh
# Gradescope runs this once, as root, in /autograder/source, to build the image that grades every
# submission: Python 3, then numpy, pytest and pytest-timeout at the versions the bundle was built with
# (grading-requirements.txt), then bubblewrap if the image allows it. Nothing else.
set -eu
cd "$(dirname "$0")"
apt-get update
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-pip
fi
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "setup.sh: the book needs Python 3.10 or newer; this image has $(python3 --version 2>&1)." \
         "Choose a base image whose Python takes the pinned versions" \
         "(the first line of grading-requirements.txt names the builder's), e.g. Ubuntu 24.04." >&2
    exit 1
fi
# The image exists only to grade, so pip may install beside the system's Python (Ubuntu 24.04 asks first).
if ! PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore \
    python3 -m pip install --no-cache-dir -r grading-requirements.txt; then
    echo "setup.sh: pip could not install the pinned versions of grading-requirements.txt on" \
         "$(python3 --version 2>&1); the bundle was built with $(head -n 1 grading-requirements.txt | cut -c3-)." \
         "Choose a base image with that Python (or newer), or build the bundle where Python matches the image." >&2
    exit 1
fi
# bubblewrap sandboxes the student's code if the platform's container allows it; without it the grader runs
# the student's code as a user of its own in a root of its own (chroot). Either way this says which, loudly.
if ! command -v bwrap >/dev/null 2>&1; then
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bubblewrap; then
        echo "setup.sh: apt-get could not install bubblewrap (see above)" >&2
    fi
fi
# (as the grader starts it: as a user of the student's own, here nobody's uid)
if command -v bwrap >/dev/null 2>&1 && setpriv --reuid=65534 --regid=65534 --clear-groups \
    bwrap --unshare-all --die-with-parent --ro-bind / / true 2>/dev/null; then
    echo "==== setup.sh: ISOLATION: bubblewrap works here: each student's code runs in a sandbox ===="
else
    echo "==== setup.sh: ISOLATION WARNING: bubblewrap is missing or cannot make a sandbox in this container;" \
         "each student's code will run as a user of its own in a root of its own instead (chroot; weaker:" \
         "it shares the container's network) ===="
fi
python3 -c 'import numpy, pytest, pytest_timeout
print("setup.sh: numpy", numpy.__version__, "and pytest", pytest.__version__)'
