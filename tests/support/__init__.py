"""What the tests share that is not a fixture, imported as ``tests.support.<module>``: Delta
facts (``cdf``), the Spark tests' checks (``helpers``), views maintained without Spark
(``duck``), the servers the tests start (``servers``); and two scripts run in processes of
their own, ``class_archive`` (by ``make``) and ``connect_client`` (by the Spark Connect
test)."""
