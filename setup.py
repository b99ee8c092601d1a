"""Ships the plugin template inside the core wheel, for ``hlort new-plugin`` outside a checkout.

``plugins/template`` (a distribution of its own, ``hlort-template``) is copied into the built
package as ``hlort/_plugin_template/`` (data, not an importable package); the sdist carries it
through MANIFEST.in. An editable install reads the checkout's ``plugins/template`` directly, so
nothing is copied then. Everything else about the distribution is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

TEMPLATE = Path(__file__).resolve().parent / "plugins" / "template"
# what new_plugin.py's copy skips too: build and cache leftovers of an installed template
SKIP = ("__pycache__", "*.pyc", "*.egg-info", "build", "dist", ".pytest_cache", ".ruff_cache")


class BuildPyWithTemplate(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not (TEMPLATE / "pyproject.toml").is_file():
            raise SystemExit(
                f"hlort: the plugin template is missing ({TEMPLATE}); the core "
                "wheel must ship it (hlort new-plugin): build from a checkout or "
                "from an sdist that includes plugins/template"
            )
        target = Path(self.build_lib, "hlort", "_plugin_template")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(TEMPLATE, target, ignore=shutil.ignore_patterns(*SKIP))


setup(cmdclass={"build_py": BuildPyWithTemplate})
