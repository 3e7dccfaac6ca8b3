# lit configuration for ephc's text tests: each .eir file has RUN lines that
# call ephc and check its output with FileCheck.
import os
import lit.formats

config.name = "ephc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".eir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.ephc), "..", "..", "tests", "lit-out")
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]

config.substitutions.append(("%ephc", config.ephc))
config.substitutions.append(("%plugindir", config.plugin_dir))
config.substitutions.append(("%examples", config.examples_dir))
config.substitutions.append(("FileCheck", os.path.join(config.llvm_bin, "FileCheck")))
config.substitutions.append(("not ", os.path.join(config.llvm_bin, "not") + " "))
config.environment["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "")
