"""GPU kernel schedules shared by the CUDA and ROCm plugins, and the GPU program plan.

``program`` (the plan as plain data) imports nothing heavy; the schedules import llvmlite and are
imported by the GPU plugins only.
"""
