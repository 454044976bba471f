"""The names commands import to check and write their outputs, from the modules that do each job:
`minitorch.paths` (a path checked before any work), `minitorch.atomic_writes` (written aside, moved into
place whole), `minitorch.recorded_runs` (which files a run replaces in a shared folder) and `minitorch.signals`
(a stop held off while the renames complete). Import from those; this module keeps older imports working."""

from minitorch.atomic_writes import (building_aside, replace_files, replace_folder,  # noqa: F401
                                     temporary_prefix, write_atomically)
from minitorch.paths import (NAME_MAX, PROJECT_SOURCES, ROOT, OutputPathError, PathError,  # noqa: F401
                             UnwritableFileError, check_input_file, check_output_file, check_output_folder,
                             checked_path, given_path)
from minitorch.recorded_runs import (RecordedRun, files_to_replace, read_recorded_run,  # noqa: F401
                                     recorded_run_text)
from minitorch.signals import signals_held  # noqa: F401
