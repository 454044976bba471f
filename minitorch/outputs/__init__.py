"""Where the commands read and write (chapter 00), one module per job:

- `paths`: a path is checked before any work (an output that cannot be written fails at once, in one line);
- `atomic_writes`: what replaces a file or a folder is written aside and moved into place whole;
- `recorded_runs`: which files a run replaces in a folder shared with other output;
- `signals`: a stop held off while the renames complete; workers that end with the command that started them.

Every name a command uses is importable from here (``from minitorch.outputs import write_atomically``).
"""

from minitorch.outputs.atomic_writes import (building_aside, remove_abandoned_builds, replace_files,  # noqa: F401
                                             replace_folder, scratch_folder, temporary_prefix, write_atomically)
from minitorch.outputs.paths import (NAME_MAX, PROJECT_SOURCES, ROOT, OutputPathError, OwnFile,  # noqa: F401
                                     PathError, UnwritableFileError, check_input_file, check_output_file,
                                     check_output_folder, check_readable, checked_path, given_path, json_record,
                                     json_written_by, refuse_a_file_not_its_own)
from minitorch.outputs.recorded_runs import (RecordedRun, files_to_replace, not_recorded,  # noqa: F401
                                             read_recorded_run, recorded_run_text, some_of, written_files)
from minitorch.outputs.signals import end_processes_marked, end_with_parent, ignore_stops, signals_held  # noqa: F401
