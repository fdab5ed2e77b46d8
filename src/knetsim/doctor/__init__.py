"""The doctor: findings with fixes, over every layer of the simulated cluster."""

from .checks import Finding
from .run import Report, SubjectNotFound, diagnose
from .scan import ScanHit, scan

__all__ = ["Finding", "Report", "ScanHit", "SubjectNotFound", "diagnose", "scan"]
