"""`swerl convert`: other agents' trajectories -> swerl trajectory records, and swerl records -> SWE-bench predictions.

One converter module per source format (sweagent, mini, openhands, sft, preds, harness), each a `Converter`
(base.py) with its own typed `Options`; `registry.FORMATS` (`--from` name -> "module:Class") is the only registry,
and `registry.create(name, **options)` / `registry.choices()` build and list them.
Whole-file formats (SWE-agent `.traj`, mini-swe-agent `.traj.json`) hold one JSON object; row formats (OpenHands
`output.jsonl`, SFT rows) hold one per line. `convert_paths` (files.py) yields a record or an InputError per source
trajectory, so one broken file costs one line and the rest still converts.
"""

from swerl_cli.convert.base import Converter as Converter
from swerl_cli.convert.base import ConverterOptions as ConverterOptions
from swerl_cli.convert.files import convert_paths as convert_paths
from swerl_cli.convert.predictions import OUTPUTS as OUTPUTS
from swerl_cli.convert.predictions import predictions as predictions
from swerl_cli.convert.predictions import unique_records as unique_records
from swerl_cli.convert.predictions import write_target as write_target
from swerl_cli.convert.registry import FORMATS as FORMATS
from swerl_cli.convert.registry import register_converter as register_converter
