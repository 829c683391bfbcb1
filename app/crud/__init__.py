"""The query layer: every database query the routes need, for datasets, jobs (with their
logs) and models.  Routes validate the request, call these and shape the response; the job
state machine (claims, fencing, leases) stays in :mod:`app.jobs.state`.
"""
