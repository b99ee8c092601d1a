"""hlort-template: the backend plugin a vendor copies (``hlort new-plugin NAME``).

Importing this package must stay cheap: hlort imports it (through the entry point) in every
process that lists backends. Everything heavy is imported by ``TemplatePlugin.create_client``.
"""

from hlort_template.plugin import PLATFORM, TemplatePlugin  # noqa: F401
